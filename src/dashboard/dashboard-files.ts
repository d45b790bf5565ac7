import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The dashboard's page templates (templates/*.eta) and its own stylesheet and script (assets/)
 * are plain files beside this module in src/dashboard/. The TypeScript build copies no such
 * files into dist/, so they are read from the package's folder (the nearest one holding
 * package.json): the same files whether Parley runs from src/ (tsx, vitest) or from dist/.
 * Callers read them once, at start-up.
 */
function packageFolder(): string {
  let folder = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(folder, 'package.json'))) {
    const parent = dirname(folder);
    if (parent === folder) throw new Error('The dashboard found no package.json above its own folder.');
    folder = parent;
  }
  return folder;
}

const DASHBOARD_FOLDER = join(packageFolder(), 'src', 'dashboard');

/** A file under src/dashboard/ (e.g. `templates`, `login.eta`). */
export function readDashboardFile(...path: string[]): Buffer {
  return readFileSync(join(DASHBOARD_FOLDER, ...path));
}
