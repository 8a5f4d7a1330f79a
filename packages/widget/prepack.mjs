// Copies the built widget (scripts/build-widget → dist/widget/) into this package's dist/ (or
// the folder after `--out`): every asset the plugins publish (integration.js's isWidgetAsset),
// including the lazily loaded tokenizer module, and the third-party license notices and SBOM
// (THIRD-PARTY-LICENSES.txt, docent-widget.cdx.json: the package never ships without them).
// Fails with a clear message when the widget has not been built.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { REQUIRED_WIDGET_FILES, isWidgetAsset } from './integration.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const built = path.resolve(here, '../../dist/widget');
const at = process.argv.indexOf('--out');
const out = at > 0 && process.argv[at + 1] ? path.resolve(process.argv[at + 1]) : path.join(here, 'dist');

for (const f of [...REQUIRED_WIDGET_FILES, 'THIRD-PARTY-LICENSES.txt', 'docent-widget.cdx.json']) {
  if (!fs.existsSync(path.join(built, f))) {
    console.error(`docent-widget: ${path.join(built, f)} is missing; run scripts/build-widget first`);
    process.exit(1);
  }
}
const files = fs
  .readdirSync(built, { withFileTypes: true })
  .filter((e) => e.isFile() && isWidgetAsset(e.name))
  .map((e) => e.name);
fs.mkdirSync(out, { recursive: true });
for (const f of files) fs.copyFileSync(path.join(built, f), path.join(out, f));
console.log(`docent-widget: copied ${files.length} files into ${out}`);
