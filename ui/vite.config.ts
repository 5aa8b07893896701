import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// `npm run dev` proxies the API to a local `sluice serve`; the build is
// static files that `sluice serve` itself serves at /.
export default defineConfig({
  plugins: [react()],
  server: { proxy: { "/api": process.env.SLUICE_API ?? "http://127.0.0.1:8080" } },
  build: { outDir: "dist", emptyOutDir: true, chunkSizeWarningLimit: 1000 },
});
