import { defineConfig } from 'vite';

// Relative asset paths: the dashboard is served by `tokenradar serve` at `/`, but nothing
// here assumes it, so the same dist/ also works under a path prefix.
export default defineConfig({
  base: './',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    assetsInlineLimit: 0,
    reportCompressedSize: true,
    sourcemap: false,
  },
  // `npm run dev`: the dev server forwards the API to a running `tokenradar serve`/`demo` or
  // to `npm run mock` (TOKENRADAR_API=http://127.0.0.1:PORT).
  server: {
    proxy: { '/api': process.env['TOKENRADAR_API'] ?? 'http://127.0.0.1:8080' },
  },
});
