/**
 * Parley's layering rules, checked on the real imports by `npm run lint` (dependency-cruiser).
 * CONVENTIONS.md explains each rule; a breach fails the lint.
 */
// Folders under src/ that every feature may build on: they import no feature themselves.
const PLATFORM = '(db|shared|config|jobs|http)';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import cycle means a two-step start-up; dependencies are built bottom up in one place.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'platform-imports-no-feature',
      severity: 'error',
      comment:
        "db/ and shared/ are the floor: they import no feature (db/schema.ts composes the features' table types, which import nothing).",
      from: { path: '^src/(db|shared)/' },
      to: { path: '^src/', pathNot: ['^src/(db|shared)/', '^src/config(\\.ts|/)', '\\.tables?\\.ts$'] },
    },
    {
      name: 'feature-through-its-front-door',
      severity: 'error',
      comment:
        'A feature imports another feature only through its service (*.service.ts) or its public index.ts, never its repository, fast path or internals.',
      from: { path: '^src/([^/]+)/', pathNot: [`^src/${PLATFORM}/`, '^src/(cli|app)/'] },
      to: {
        path: '^src/([^/]+)/',
        pathNot: ['^src/$1/', `^src/${PLATFORM}/`, '\\.service\\.ts$', '/index\\.ts$', '\\.(tables?|model|schemas)\\.ts$'],
      },
    },
    {
      name: 'cli-through-services',
      severity: 'error',
      comment: 'CLI commands call services (or a public index.ts), never repositories or fast paths.',
      from: { path: '^src/cli/' },
      to: { path: '\\.(repository|fast)\\.ts$' },
    },
    {
      name: 'domain-imports-no-http',
      severity: 'error',
      comment: 'Services, tasks, repositories and fast paths know nothing of HTTP.',
      from: { path: '\\.(service|task|repository|fast)\\.ts$' },
      to: { path: '^src/http/' },
    },
    {
      name: 'repositories-below-services',
      severity: 'error',
      comment: 'Repositories and fast paths are the bottom of a feature: they call no service, route or task.',
      from: { path: '\\.(repository|fast)\\.ts$' },
      to: { path: '\\.(service|routes|task|pages)\\.ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'], extensions: ['.ts', '.js'] },
  },
};
