// Writes docs/configuration.md from src/config/settings.ts (the one list of settings).
import { writeFileSync } from 'node:fs';
import { configurationPage } from '../src/config/docs.js';

writeFileSync(new URL('../docs/configuration.md', import.meta.url), configurationPage());
console.log('docs/configuration.md written');
