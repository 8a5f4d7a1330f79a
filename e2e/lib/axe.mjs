// axe-core (npm `axe-core`, pinned in e2e/package.json) for the browser suites: injects it into
// a page and runs it on the whole page or on the docent widget only (its shadow hosts), with the
// WCAG 2.0, 2.1 and 2.2 level A and AA rules. docs/widget.md, "Accessibility", says what is checked.
import fs from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const AXE_PATH = require.resolve('axe-core/axe.min.js');
const AXE_SOURCE = fs.readFileSync(AXE_PATH, 'utf8');
/** The axe-core version in use (from its package.json). */
export const AXE_VERSION = JSON.parse(fs.readFileSync(require.resolve('axe-core/package.json'), 'utf8')).version;

/** The rule tags of WCAG 2.0, 2.1 and 2.2, levels A and AA. */
export const WCAG_AA = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22a', 'wcag22aa'];

/** The docent widget on a page: the floating launcher's host and inline `<docent-chat>` elements. */
export const WIDGET = ['[data-docent-host]', 'docent-chat'];

/**
 * Runs axe-core in `page` and returns its violations.
 * @param {import('playwright-core').Page} page
 * @param {{ include?: string[], tags?: string[], rules?: string[] }} [opts] `include`: CSS selectors
 *   of the parts to check (default the whole page; shadow trees under them are checked too);
 *   `tags`: rule tags (default WCAG 2.0/2.1/2.2 A and AA); `rules`: more rules to run (by id, e.g.
 *   the best-practice `landmark-no-duplicate-banner`)
 * @returns {Promise<object[]>} axe's violations (id, impact, help, nodes)
 */
export async function axeViolations(page, opts = {}) {
  const tags = opts.tags || WCAG_AA;
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) {
    await page.addScriptTag({ content: AXE_SOURCE });
  }
  return page.evaluate(async ({ include, tags, rules }) => {
    let context = document;
    if (include) {
      const present = include.filter((s) => document.querySelector(s));
      if (present.length === 0) throw new Error(`axe: nothing on the page matches ${include.join(', ')}`);
      context = { include: present.map((s) => [s]) };
    }
    const r = await window.axe.run(context, {
      runOnly: { type: 'tag', values: tags },
      rules: Object.fromEntries(rules.map((id) => [id, { enabled: true }])),
      resultTypes: ['violations'],
    });
    return r.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => ({ target: n.target, html: n.html.slice(0, 200), summary: n.failureSummary })),
    }));
  }, { include: opts.include || null, tags, rules: opts.rules || [] });
}

/** The violations as readable lines (for an assertion message). */
export function describeViolations(violations) {
  return violations.map((v) => `${v.id} (${v.impact}): ${v.help}\n` +
    v.nodes.map((n) => `    ${JSON.stringify(n.target)} ${n.html}\n      ${(n.summary || '').replace(/\n/g, '\n      ')}`).join('\n'))
    .join('\n');
}

/**
 * Fails (throws) when axe-core finds a violation in `page` (see `axeViolations` for `opts`);
 * `what` names the state checked in the message.
 */
export async function assertAccessible(page, what, opts = {}) {
  const violations = await axeViolations(page, opts);
  if (violations.length > 0) {
    throw new Error(`axe-core ${AXE_VERSION}: ${violations.length} rule(s) violated (${what}):\n${describeViolations(violations)}`);
  }
}
