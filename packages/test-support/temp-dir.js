// Test support shared by the plugin packages' tests (not published): temp folders that are
// removed when the test file ends, because CI runs on a disk shared with other work.
import { after } from 'node:test';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

const made = [];
after(() => Promise.all(made.map((d) => fsp.rm(d, { recursive: true, force: true }))));

/** A new empty folder under the system temp dir, deleted after this test file's tests. */
export async function tempDir(prefix) {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), prefix));
  made.push(dir);
  return dir;
}
