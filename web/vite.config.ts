import { defineConfig } from 'vite';

// Relative asset paths: the dashboard is served by `tokenradar serve` at `/`, but nothing
// here assumes it, so the same dist/ also works under a path prefix.
export default defineConfig({
  base: './',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // One small app: a single JS chunk and a single CSS file keep first load to 3 requests.
    assetsInlineLimit: 0,
    reportCompressedSize: true,
    sourcemap: false,
  },
});
