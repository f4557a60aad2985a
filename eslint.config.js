// Lint rules: typescript-eslint's recommended set; prettier owns formatting.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'certs/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      // TypeScript already checks that every name exists (and knows Node's globals).
      'no-undef': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'no-console': ['error', { allow: ['error'] }],
    },
  },
  { files: ['test/**', 'bench/**', 'src/cli/**'], rules: { 'no-console': 'off' } },
  // Tests read JSON answers field by field; typing every response would add nothing.
  {
    files: ['**/*.test.ts', 'test/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
