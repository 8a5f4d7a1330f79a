// docent (npm): finds the prebuilt `docent` binary of this platform and runs it.
//
// The binary ships in one package per platform (docent-linux-x64, docent-darwin-arm64, ...),
// listed in this package's optionalDependencies: npm installs only the one whose `os` and `cpu`
// match, the way esbuild and Pagefind do it. DOCENT_BINARY=/path/to/docent overrides the lookup
// (a binary built from source with `cargo build --release -p docent-cli`).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);

/** The platform packages, `${process.platform}-${process.arch}` → package name. */
export const PLATFORM_PACKAGES = {
  'linux-x64': 'docent-linux-x64',
  'linux-arm64': 'docent-linux-arm64',
  'darwin-x64': 'docent-darwin-x64',
  'darwin-arm64': 'docent-darwin-arm64',
  'win32-x64': 'docent-win32-x64',
};

/** Error whose message says what to do. */
export class DocentBinaryError extends Error {
  constructor(message) {
    super(`docent: ${message}`);
    this.name = 'DocentBinaryError';
  }
}

/**
 * The absolute path of the `docent` binary to run: `DOCENT_BINARY` when set, else the binary of
 * the installed platform package. Throws a DocentBinaryError saying how to get one.
 * @param {{platform?: string, arch?: string, env?: object, resolve?: (id: string) => string}} [o]
 */
export function binaryPath(o = {}) {
  const env = o.env ?? process.env;
  if (env.DOCENT_BINARY) {
    if (!fs.existsSync(env.DOCENT_BINARY)) {
      throw new DocentBinaryError(`DOCENT_BINARY=${env.DOCENT_BINARY} does not exist`);
    }
    return env.DOCENT_BINARY;
  }
  const key = `${o.platform ?? process.platform}-${o.arch ?? process.arch}`;
  const pkg = PLATFORM_PACKAGES[key];
  if (!pkg) {
    throw new DocentBinaryError(
      `no prebuilt binary for ${key} (prebuilt: ${Object.keys(PLATFORM_PACKAGES).join(', ')}); ` +
        'build one with `cargo install --git <docent repository> docent-cli` and set DOCENT_BINARY to it',
    );
  }
  const exe = key.startsWith('win32') ? 'docent.exe' : 'docent';
  const resolve = o.resolve ?? require.resolve;
  let file;
  try {
    file = path.join(path.dirname(resolve(`${pkg}/package.json`)), 'bin', exe);
  } catch {
    throw new DocentBinaryError(
      `the package ${pkg} with the ${key} binary is not installed; reinstall without ` +
        '--no-optional / --omit=optional (npm install docent), or set DOCENT_BINARY to a docent binary',
    );
  }
  if (!fs.existsSync(file)) {
    throw new DocentBinaryError(`${file} is missing from ${pkg}; reinstall it (npm install docent)`);
  }
  return file;
}

/**
 * Runs `docent <args>` and resolves with { code, stdout, stderr } (stdout/stderr are '' when
 * `stdio` is 'inherit'). Rejects only when the binary cannot be found or started.
 * @param {string[]} args
 * @param {{cwd?: string, env?: object, stdio?: 'pipe'|'inherit'}} [opts]
 */
export function run(args, opts = {}) {
  const bin = binaryPath({ env: opts.env });
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      stdio: opts.stdio === 'inherit' ? 'inherit' : ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d) => (stdout += d));
    child.stderr?.on('data', (d) => (stderr += d));
    child.on('error', (err) => reject(new DocentBinaryError(`cannot start ${bin}: ${err.message}`)));
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), stdout, stderr }));
  });
}

/** `run` for the bin script: the same, synchronously, with the terminal attached. */
export function runSync(args) {
  const bin = binaryPath();
  const r = spawnSync(bin, args, { stdio: 'inherit' });
  if (r.error) throw new DocentBinaryError(`cannot start ${bin}: ${r.error.message}`);
  if (r.signal) process.kill(process.pid, r.signal);
  return r.status ?? 1;
}
