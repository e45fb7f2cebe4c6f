// eslint (flat config) with typescript-eslint; formatting is prettier's job.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// The layers (docs/architecture.md): api/ and workers/ never import each other, and shared/
// imports neither. The queues in shared/queues.ts are the one bridge between the processes.
const layerPattern = (dir, banned) => ({
  regex: `^(\\.\\./)+(${banned.join('|')})/`,
  message: `${dir}/ must not import ${banned.map((b) => `${b}/`).join(' or ')}; code both sides need belongs in shared/ (docs/architecture.md).`,
});
const layer = (dir, banned) => ({
  files: [`${dir}/**/*.ts`],
  rules: { 'no-restricted-imports': ['error', { patterns: [layerPattern(dir, banned)] }] },
});
// Inside api/: the SMTP servers and the console do not import the HTTP routes; what they share
// with them (accepting and canceling a message, a CSV download) lives in api/mail/ and api/.
const besideRoutes = (dir) => ({
  files: [`${dir}/**/*.ts`],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          layerPattern('api', ['workers']),
          {
            regex: '^\\.\\./routes/',
            message: `${dir}/ must not import api/routes/; move what both need to api/mail/ or api/ (docs/architecture.md).`,
          },
        ],
      },
    ],
  },
});
// shared/db/ is the bottom layer: it takes values only from itself and the leaf modules (no
// imports of their own) below; types from anywhere in shared/.
const DB_LEAVES = ['ids', 'errors', 'paths', 'streams', 'durations'];
const dbLayer = {
  files: ['shared/db/**/*.ts'],
  rules: {
    '@typescript-eslint/no-restricted-imports': [
      'error',
      {
        patterns: [
          {
            regex: `^\\.\\./(?!(${DB_LEAVES.join('|')})\\.js$)`,
            allowTypeImports: true,
            message: `shared/db/ takes values only from shared/db/ and ${DB_LEAVES.map((l) => `${l}.ts`).join(', ')}; move the code down, or the caller up (docs/architecture.md).`,
          },
        ],
      },
    ],
  },
};

// Type-aware rules (typescript-eslint's recommendedTypeChecked) on the TypeScript sources: a
// promise nobody awaits or catches (no-floating-promises: an unhandled rejection ends the
// process), a promise where a callback's result is ignored (no-misused-promises), awaiting a
// non-promise, throwing a non-Error, "[object Object]" in a string, a method called without its
// object, and values typed `any` flowing through production code.
const typeChecked = tseslint.configs.recommendedTypeChecked.map((c) => ({ ...c, files: ['**/*.ts'] }));

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.data/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  ...typeChecked,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { project: './tsconfig.json', tsconfigRootDir: import.meta.dirname } },
    rules: {
      // Style, not bugs: an async function without await is how a sync implementation meets an
      // async interface; an assertion the compiler finds redundant documents the shape it expects.
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
    },
  },
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'off',
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    // postgres.js's helpers take narrow types; shared/db/params.ts is the one place that casts to
    // them. Anywhere else, `as never` hides a type the code should state.
    files: ['api/**/*.ts', 'shared/**/*.ts', 'workers/**/*.ts', 'bench/**/*.ts'],
    ignores: ['shared/db/params.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'TSAsExpression > TSNeverKeyword',
          message: '`as never` hides a type: state it, or use a helper of shared/db/params.ts for postgres.js.',
        },
        {
          selector: 'TSAsExpression > TSArrayType > TSNeverKeyword',
          message: '`as never[]` hides a type: state it, or use a helper of shared/db/params.ts for postgres.js.',
        },
      ],
    },
  },
  layer('api', ['workers']),
  layer('workers', ['api']),
  layer('shared', ['api', 'workers']),
  besideRoutes('api/smtp'),
  besideRoutes('api/console'),
  dbLayer,
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', module: 'writable' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // The console's one script runs in the browser.
    files: ['api/console/assets/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: {
        document: 'readonly',
        navigator: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        fetch: 'readonly',
        location: 'readonly',
        Intl: 'readonly',
      },
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-expressions': 'off',
      // Tests read answers as `any` (TestResponse.json) and assert on them: the assertions are the
      // type check there.
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
);
