#!/usr/bin/env node
// `npx docent ...`: runs this platform's prebuilt docent binary (see ../lib/index.js).
import { runSync, DocentBinaryError } from '../lib/index.js';

try {
  process.exitCode = runSync(process.argv.slice(2));
} catch (err) {
  if (!(err instanceof DocentBinaryError)) throw err;
  console.error(err.message);
  process.exitCode = 1;
}
