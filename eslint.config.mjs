import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

export default [
  { ignores: ['**/node_modules/**', 'dist/**', '.rag-data/**', '.models/**', '.local/**', 'libs/contracts/src/generated/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { '@nx': nx },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Thin apps, thick libs: domain logic never reaches adapters or apps.
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          allow: [],
          depConstraints: [
            { sourceTag: 'type:contracts', onlyDependOnLibsWithTags: ['type:contracts'] },
            { sourceTag: 'type:domain', onlyDependOnLibsWithTags: ['type:domain', 'type:contracts'] },
            { sourceTag: 'type:ports', onlyDependOnLibsWithTags: ['type:ports', 'type:contracts', 'type:domain'] },
            { sourceTag: 'type:platform', onlyDependOnLibsWithTags: ['type:platform', 'type:contracts'] },
            {
              sourceTag: 'type:application',
              onlyDependOnLibsWithTags: ['type:application', 'type:ports', 'type:domain', 'type:contracts', 'type:platform'],
            },
            {
              sourceTag: 'type:adapters',
              onlyDependOnLibsWithTags: ['type:adapters', 'type:ports', 'type:domain', 'type:contracts', 'type:platform'],
            },
            {
              sourceTag: 'type:services',
              onlyDependOnLibsWithTags: ['type:services', 'type:application', 'type:adapters', 'type:ports', 'type:domain', 'type:contracts', 'type:platform'],
            },
            {
              sourceTag: 'type:app',
              onlyDependOnLibsWithTags: ['type:services', 'type:application', 'type:adapters', 'type:ports', 'type:domain', 'type:contracts', 'type:platform'],
            },
          ],
        },
      ],
    },
  },
];
