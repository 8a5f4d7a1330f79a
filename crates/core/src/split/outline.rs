//! The outline of a split index (the entry's `Outline` section): what ranking needs of every
//! chunk and page, and nothing a reader only needs for the hits it shows. Writer and reader
//! side by side, as in [`crate::format`].
//!
//! A search needs, per chunk, its BM25 length (the `DocLens` section), its section (hits are
//! sections: no two share one) and its page; per page, its url (`--url-prefix`, the page's
//! namespace lookup, [`crate::scope`]), its namespace (the namespace filter) and whether it is
//! release notes (demoted for other questions, [`crate::pagekind`]). Titles, anchors,
//! breadcrumbs, token counts and texts are in the text shards ([`super::shard`]).
//!
//! ```text
//! varint namespace count K, then K strings (varint byte length, UTF-8)
//! varint page count P, then per page: its url (string), varint namespace (< K),
//!        varint flags (bit 0: release notes; no other bit is set)
//! varint section count S, then per section: its page, as the zigzag varint of
//!        page − the previous section's page (the first section's from 0); < P
//! varint run count R, then per run of consecutive chunks of one section: the section, as
//!        the zigzag varint of section − (the previous run's section + 1) (the first run's
//!        from 0), < S; varint chunk count ≥ 1. The counts add up to the index's chunks.
//! ```
//!
//! Sections and pages are numbered as in the one-file index (in the order of their first
//! chunk), so the rankings and their tie-breaks are the one-file index's. Chunks of a section
//! are consecutive, so a section costs about 2 bytes before compression.

use super::shard::{push_str, push_varint, Reader};
use crate::format::FormatError;

/// A page of the outline.
#[derive(Debug, Clone, PartialEq)]
pub struct OutlinePage {
    pub url: Box<str>,
    /// Index into [`Outline::namespaces`].
    pub namespace: u32,
    /// Release notes (see [`crate::pagekind::is_release_notes`]), demoted for other questions.
    pub release_notes: bool,
}

/// The decoded outline.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Outline {
    pub namespaces: Vec<Box<str>>,
    pub pages: Vec<OutlinePage>,
    /// Page of each section.
    pub section_page: Vec<u32>,
    /// Section of each chunk.
    pub chunk_section: Vec<u32>,
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

impl Outline {
    /// Encode as an `Outline` section.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        push_varint(&mut out, self.namespaces.len() as u64);
        for ns in &self.namespaces {
            push_str(&mut out, ns);
        }
        push_varint(&mut out, self.pages.len() as u64);
        for p in &self.pages {
            push_str(&mut out, &p.url);
            push_varint(&mut out, u64::from(p.namespace));
            push_varint(&mut out, u64::from(p.release_notes));
        }
        push_varint(&mut out, self.section_page.len() as u64);
        let mut prev = 0i64;
        for &p in &self.section_page {
            push_varint(&mut out, zigzag(i64::from(p) - prev));
            prev = i64::from(p);
        }
        let mut runs: Vec<(u32, u64)> = Vec::new();
        for &s in &self.chunk_section {
            match runs.last_mut() {
                Some((last, len)) if *last == s => *len += 1,
                _ => runs.push((s, 1)),
            }
        }
        push_varint(&mut out, runs.len() as u64);
        let mut next = 0i64;
        for (s, len) in runs {
            push_varint(&mut out, zigzag(i64::from(s) - next));
            push_varint(&mut out, len);
            next = i64::from(s) + 1;
        }
        out
    }

    /// Parse and validate an `Outline` section of an index of `n` chunks.
    pub fn parse(b: &[u8], n: usize) -> Result<Outline, FormatError> {
        let bad = || FormatError::Corrupt("the outline is malformed".into());
        let mut r = Reader::new(b);
        let namespaces = r.strs()?;
        let mut pages = Vec::new();
        for _ in 0..r.count()? {
            let url = r.str()?.into();
            let namespace = r.below(namespaces.len())? as u32;
            let release_notes = r.below(2)? == 1;
            pages.push(OutlinePage { url, namespace, release_notes });
        }
        // A zigzag step from `from`, landing below `limit`.
        let step = |r: &mut Reader<'_>, from: i64, limit: usize| {
            let v =
                from.checked_add(unzigzag(r.varint()?)).filter(|&v| v >= 0 && (v as usize) < limit);
            v.ok_or_else(bad)
        };
        let mut section_page = Vec::new();
        let mut prev = 0;
        for _ in 0..r.count()? {
            prev = step(&mut r, prev, pages.len())?;
            section_page.push(prev as u32);
        }
        let mut chunk_section = Vec::with_capacity(n.min(b.len()));
        let mut next = 0;
        for _ in 0..r.count()? {
            let s = step(&mut r, next, section_page.len())?;
            let len = r.below(n - chunk_section.len() + 1)?;
            if len == 0 {
                return Err(bad());
            }
            chunk_section.resize(chunk_section.len() + len, s as u32);
            next = s + 1;
        }
        if chunk_section.len() != n || !r.done() {
            return Err(bad());
        }
        Ok(Outline { namespaces, pages, section_page, chunk_section })
    }

    /// The page of chunk `i` (< the chunk count).
    pub fn page_of(&self, i: usize) -> Option<&OutlinePage> {
        let s = *self.chunk_section.get(i)?;
        self.pages.get(*self.section_page.get(s as usize)? as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Outline {
        Outline {
            namespaces: vec!["".into(), "v2".into()],
            pages: vec![
                OutlinePage { url: "/a.html".into(), namespace: 0, release_notes: false },
                OutlinePage { url: "/b.html".into(), namespace: 1, release_notes: true },
            ],
            section_page: vec![0, 0, 1, 0],
            chunk_section: vec![0, 0, 1, 2, 2, 2, 1, 3],
        }
    }

    #[test]
    fn an_outline_round_trips_even_with_a_section_that_comes_back() {
        let o = sample();
        let b = o.encode();
        assert_eq!(Outline::parse(&b, 8).unwrap(), o);
        assert_eq!(&*o.page_of(3).unwrap().url, "/b.html");
        // Another chunk count, a cut, a trailing byte: refused.
        assert!(Outline::parse(&b, 7).is_err());
        assert!(Outline::parse(&b, 9).is_err());
        assert!(Outline::parse(&b[..b.len() - 1], 8).is_err());
        let mut longer = b.clone();
        longer.push(0);
        assert!(Outline::parse(&longer, 8).is_err());
    }

    #[test]
    fn garbage_outlines_are_refused_without_a_panic() {
        let b = sample().encode();
        for i in 0..b.len() {
            for x in [0x00, 0x01, 0x7f, 0x80, 0xff] {
                let mut c = b.clone();
                c[i] = x;
                let _ = Outline::parse(&c, 8);
            }
        }
        for junk in [&[][..], &[0xff; 12][..], &[1, 0x80, 0x80][..], &[0, 0, 0, 0][..]] {
            assert!(Outline::parse(junk, 3).is_err());
        }
    }
}
