import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// Build straight into the Python package, which serves the files (board/static is gitignored).
const outDir = fileURLToPath(new URL("../src/tensorsight/board/static", import.meta.url));

export default defineConfig({
  base: "./",
  build: {
    outDir,
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 400,
  },
  test: {
    include: ["src/**/*.test.ts"],
    environment: "node",
  },
});
