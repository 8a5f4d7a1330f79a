// Copies the built widget (scripts/build-widget → dist/widget/) into this package's dist/.
// Fails with a clear message when the widget has not been built.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const built = path.resolve(here, '../../dist/widget');
const out = path.join(here, 'dist');
const files = ['docent.js', 'docent-widget.js', 'docent-widget_bg.wasm', 'docent.css', 'cl100k_base.tiktoken'];

for (const f of files) {
  if (!fs.existsSync(path.join(built, f))) {
    console.error(`docent-widget: ${path.join(built, f)} is missing; run scripts/build-widget first`);
    process.exit(1);
  }
}
fs.mkdirSync(out, { recursive: true });
for (const f of files) fs.copyFileSync(path.join(built, f), path.join(out, f));
console.log(`docent-widget: copied ${files.length} files into ${out}`);
