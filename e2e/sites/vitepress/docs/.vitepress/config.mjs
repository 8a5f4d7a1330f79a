import { defineConfig } from 'vitepress';
import { withDocent } from 'docent-vitepress';

// Two locales (English at the root, French under /fr/) and an old version as a folder (/v1/).
// DOCENT_E2E_PLAIN=1 builds it without docent (for BENCHMARKS.md).
const site = defineConfig({
  title: 'Frobnicator',
  description: 'The Frobnicator docs (a docent e2e site)',
  cleanUrls: true,
  locales: {
    root: { label: 'English', lang: 'en' },
    fr: { label: 'Français', lang: 'fr', link: '/fr/' },
  },
  themeConfig: {
    sidebar: {
      '/guide/': [{ text: 'Guide', items: [{ text: 'Install', link: '/guide/install' }, { text: 'Configure', link: '/guide/configure' }] }],
      '/v1/': [{ text: 'Guide (v1)', items: [{ text: 'Install', link: '/v1/guide/install' }] }],
      '/fr/': [{ text: 'Guide', items: [{ text: 'Installation', link: '/fr/guide/installation' }] }],
    },
  },
});

export default process.env.DOCENT_E2E_PLAIN === '1'
  ? site
  : withDocent(site, {
    embed: 'none',
    versions: ['v1'],
    title: 'Ask the Frobnicator docs',
    // the build fails unless these golden questions find their sections (docs/eval.md)
    eval: { questions: 'docent-questions.jsonl', minRecall: 1, maxAnsweredUnanswerable: 0 },
  });
