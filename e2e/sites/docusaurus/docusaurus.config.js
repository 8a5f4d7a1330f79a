// A Docusaurus classic site: docs 2.x (current, at /docs/) and 1.0 (/docs/1.0/), English and
// French (/fr/). DOCENT_E2E_PLAIN=1 builds it without docent (for BENCHMARKS.md).
const plain = process.env.DOCENT_E2E_PLAIN === '1';

export default {
  title: 'Frobnicator',
  url: 'https://frob.example.com',
  baseUrl: '/',
  onBrokenLinks: 'throw',
  i18n: { defaultLocale: 'en', locales: ['en', 'fr'] },
  presets: [
    [
      'classic',
      {
        docs: {
          sidebarPath: './sidebars.js',
          lastVersion: 'current',
          versions: { current: { label: '2.x' } },
        },
        blog: false,
      },
    ],
  ],
  themeConfig: {
    navbar: { items: [{ type: 'docsVersionDropdown' }, { type: 'localeDropdown' }] },
  },
  plugins: plain ? [] : [['docusaurus-plugin-docent', { embed: 'none', title: 'Ask the Frobnicator docs' }]],
};
