import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from '../../test-support/temp-dir.js';
import { binaryPath, run, DocentBinaryError, PLATFORM_PACKAGES } from '../lib/index.js';

/** A fake platform package with an executable `docent` shell script. */
async function fakePlatformPackage() {
  const dir = await tempDir('docent-cli-');
  const pkg = path.join(dir, 'node_modules', 'docent-linux-x64');
  fs.mkdirSync(path.join(pkg, 'bin'), { recursive: true });
  fs.writeFileSync(path.join(pkg, 'package.json'), '{"name":"docent-linux-x64","version":"0.1.0"}');
  const exe = path.join(pkg, 'bin', 'docent');
  fs.writeFileSync(exe, '#!/bin/sh\necho "args: $*"\necho oops >&2\nexit 3\n');
  fs.chmodSync(exe, 0o755);
  return { dir, pkg, exe };
}

test('the binary comes from the platform package of this os and cpu', async () => {
  const { pkg, exe } = await fakePlatformPackage();
  const resolve = (id) => {
    assert.equal(id, 'docent-linux-x64/package.json');
    return path.join(pkg, 'package.json');
  };
  assert.equal(binaryPath({ platform: 'linux', arch: 'x64', env: {}, resolve }), exe);
});

test('a missing platform package or an unknown platform says what to do', () => {
  const resolve = () => {
    throw new Error('MODULE_NOT_FOUND');
  };
  assert.throws(() => binaryPath({ platform: 'linux', arch: 'x64', env: {}, resolve }),
    (e) => e instanceof DocentBinaryError && /docent-linux-x64 .*not installed.*--omit=optional.*DOCENT_BINARY/.test(e.message));
  assert.throws(() => binaryPath({ platform: 'aix', arch: 'ppc64', env: {} }),
    /no prebuilt binary for aix-ppc64 \(prebuilt: linux-x64.*set DOCENT_BINARY/);
  assert.throws(() => binaryPath({ env: { DOCENT_BINARY: '/nowhere/docent' } }), /DOCENT_BINARY=\/nowhere\/docent does not exist/);
  assert.ok(Object.keys(PLATFORM_PACKAGES).includes('linux-x64'));
});

test('run passes the arguments and returns the exit code and output', { skip: process.platform === 'win32' }, async () => {
  const { exe } = await fakePlatformPackage();
  const r = await run(['index', 'docs dir'], { env: { ...process.env, DOCENT_BINARY: exe } });
  assert.deepEqual(r, { code: 3, stdout: 'args: index docs dir\n', stderr: 'oops\n' });
});
