//! Grouping questions by meaning: with the index's embedding model when there is one, else by
//! the words they share (TF-IDF over docent's own tokenizer, so "closures" meets "closure").
//!
//! One pass, leader-style: each question joins the group whose centroid it is closest to when
//! that is close enough, else starts a group. Cheap (questions × groups), order-stable, and
//! good enough to show "twelve people asked about proxies" on a report page.

use std::collections::HashMap;

/// How to compare questions.
pub enum Grouping {
    /// TF-IDF over docent's tokens.
    Words,
    /// The questions' embeddings (in the order of the texts) and the cosine to join a group.
    Vectors {
        /// One per text.
        vectors: Vec<Vec<f32>>,
        /// Cosine at or above which a question joins a group.
        threshold: f32,
    },
}

/// Cosine (TF-IDF) at or above which a question joins a group of word vectors.
pub const WORD_THRESHOLD: f32 = 0.3;

/// The joining cosine for a model whose unrelated texts land at `off_topic` (the index's
/// `off_topic_cosine`): halfway and a bit from there to identical, so models with a high
/// cosine floor (e5: ≈ 0.75) group as tightly as those near zero (MiniLM).
pub fn vector_threshold(off_topic: f32) -> f32 {
    let off = off_topic.clamp(0.0, 0.95);
    off + (1.0 - off) * 0.55
}

/// A group of questions: indexes into the texts, the first is the one nearest the centroid.
#[derive(Debug, Clone, PartialEq)]
pub struct Cluster {
    /// Members, the most central first.
    pub members: Vec<usize>,
}

fn normalize(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// Sparse TF-IDF vectors over the tokens, each normalised; a question without a token gets an
/// empty vector and always starts its own group.
fn word_vectors(texts: &[String]) -> Vec<Vec<(u32, f32)>> {
    let mut ids: HashMap<String, u32> = HashMap::new();
    let docs: Vec<HashMap<u32, f32>> = texts
        .iter()
        .map(|t| {
            let mut tf = HashMap::new();
            for tok in docent_core::lexical::tokenize(t) {
                let n = ids.len() as u32;
                *tf.entry(*ids.entry(tok).or_insert(n)).or_insert(0.0) += 1.0;
            }
            tf
        })
        .collect();
    let mut df = vec![0u32; ids.len()];
    for d in &docs {
        for &t in d.keys() {
            df[t as usize] += 1;
        }
    }
    let n = texts.len().max(1) as f32;
    docs.into_iter()
        .map(|d| {
            let mut v: Vec<(u32, f32)> = d
                .into_iter()
                .map(|(t, tf)| (t, (1.0 + tf).ln() * (1.0 + n / df[t as usize] as f32).ln()))
                .collect();
            v.sort_by_key(|&(t, _)| t);
            let norm = v.iter().map(|(_, w)| w * w).sum::<f32>().sqrt();
            if norm > 0.0 {
                v.iter_mut().for_each(|(_, w)| *w /= norm);
            }
            v
        })
        .collect()
}

/// A vector space the leader pass can work in.
trait Space {
    type Centroid;
    fn len(&self) -> usize;
    fn start(&self, i: usize) -> Self::Centroid;
    fn add(&self, c: &mut Self::Centroid, i: usize);
    fn cos(&self, c: &Self::Centroid, i: usize) -> f32;
}

struct Sparse(Vec<Vec<(u32, f32)>>);
struct Dense(Vec<Vec<f32>>);

impl Space for Sparse {
    type Centroid = (HashMap<u32, f32>, f32);
    fn len(&self) -> usize {
        self.0.len()
    }
    fn start(&self, i: usize) -> Self::Centroid {
        let mut c = (HashMap::new(), 0.0);
        self.add(&mut c, i);
        c
    }
    fn add(&self, c: &mut Self::Centroid, i: usize) {
        for &(t, w) in &self.0[i] {
            *c.0.entry(t).or_insert(0.0) += w;
        }
        c.1 = c.0.values().map(|w| w * w).sum::<f32>().sqrt();
    }
    fn cos(&self, c: &Self::Centroid, i: usize) -> f32 {
        if c.1 == 0.0 {
            return 0.0;
        }
        self.0[i].iter().map(|(t, w)| w * c.0.get(t).copied().unwrap_or(0.0)).sum::<f32>() / c.1
    }
}

impl Space for Dense {
    type Centroid = Vec<f32>;
    fn len(&self) -> usize {
        self.0.len()
    }
    fn start(&self, i: usize) -> Vec<f32> {
        self.0[i].clone()
    }
    fn add(&self, c: &mut Vec<f32>, i: usize) {
        c.iter_mut().zip(&self.0[i]).for_each(|(a, b)| *a += b);
    }
    fn cos(&self, c: &Vec<f32>, i: usize) -> f32 {
        let n = c.iter().map(|x| x * x).sum::<f32>().sqrt();
        if n == 0.0 {
            return 0.0;
        }
        c.iter().zip(&self.0[i]).map(|(a, b)| a * b).sum::<f32>() / n
    }
}

fn leader<S: Space>(s: &S, threshold: f32) -> Vec<Cluster> {
    let mut groups: Vec<(S::Centroid, Vec<usize>)> = Vec::new();
    for i in 0..s.len() {
        let best = groups
            .iter()
            .enumerate()
            .map(|(g, (c, _))| (g, s.cos(c, i)))
            .filter(|&(_, c)| c >= threshold)
            .max_by(|a, b| a.1.total_cmp(&b.1));
        match best {
            Some((g, _)) => {
                s.add(&mut groups[g].0, i);
                groups[g].1.push(i);
            }
            None => groups.push((s.start(i), vec![i])),
        }
    }
    let mut out: Vec<Cluster> = groups
        .into_iter()
        .map(|(c, mut members)| {
            // Most central first, then in arrival order.
            members.sort_by(|&a, &b| s.cos(&c, b).total_cmp(&s.cos(&c, a)).then(a.cmp(&b)));
            Cluster { members }
        })
        .collect();
    out.sort_by(|a, b| b.members.len().cmp(&a.members.len()).then(a.members.cmp(&b.members)));
    out
}

/// Group `texts`, biggest group first.
pub fn cluster(texts: &[String], grouping: Grouping) -> Vec<Cluster> {
    match grouping {
        Grouping::Words => leader(&Sparse(word_vectors(texts)), WORD_THRESHOLD),
        Grouping::Vectors { mut vectors, threshold } => {
            vectors.iter_mut().for_each(|v| normalize(v));
            vectors.resize(texts.len(), Vec::new());
            leader(&Dense(vectors), threshold)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn questions_sharing_their_words_group_together() {
        let texts = s(&[
            "how do I set up a proxy for corporate networks",
            "which proxy settings work behind a corporate firewall",
            "can I bake sourdough bread",
            "corporate proxy configuration",
            "",
        ]);
        let c = cluster(&texts, Grouping::Words);
        assert_eq!(c[0].members.len(), 3, "{c:?}");
        assert!(c[0].members.iter().all(|&i| i != 2 && i != 4));
        assert_eq!(c.iter().map(|c| c.members.len()).sum::<usize>(), texts.len());
    }

    #[test]
    fn vectors_group_by_the_model_threshold() {
        let texts = s(&["a", "b", "c"]);
        let vectors = vec![vec![1.0, 0.0], vec![0.9, 0.1], vec![0.0, 1.0]];
        let c = cluster(&texts, Grouping::Vectors { vectors, threshold: vector_threshold(0.01) });
        assert_eq!(c[0].members.len(), 2);
        assert_eq!(c.len(), 2);
        assert!(vector_threshold(0.75) > 0.85 && vector_threshold(0.01) < 0.6);
    }

    #[test]
    fn nothing_to_group_is_fine() {
        assert!(cluster(&[], Grouping::Words).is_empty());
        let c = cluster(&s(&["x"]), Grouping::Vectors { vectors: vec![], threshold: 0.5 });
        assert_eq!(c, vec![Cluster { members: vec![0] }]);
    }
}
