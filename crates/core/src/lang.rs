//! Is a question written in English? A cheap guess, good enough for two decisions: whether
//! the widget asks a chat model to rewrite (translate) it, and whether search can judge it by
//! how many of its words the (English) docs contain — it cannot when the words are German.
//!
//! Two signals: letters outside ASCII (CJK, Cyrillic, Greek... and heavily accented text), and
//! function words of the most common Latin-script languages that are not English words.

/// Function words of German, French, Spanish, Portuguese, Italian and Dutch that are not also
/// common English words (so "die", "come", "son", "a", "in", "no" are left out).
const FOREIGN: &[&str] = &[
    "aber", "als", "auf", "aus", "avec", "bei", "cela", "ces", "cette", "che", "comme", "comment",
    "como", "cómo", "con", "dans", "das", "dass", "del", "dem", "den", "der", "des", "deux",
    "dois", "dos", "durch", "ein", "eine", "einem", "einen", "einer", "eines", "ello", "elle",
    "está", "est", "estou", "et", "faire", "fazer", "für", "het", "ich", "ist", "je", "kann",
    "kein", "keine", "les", "los", "mais", "meine", "meinen", "mit", "nach", "nicht", "nous",
    "oder", "ook", "para", "pas", "per", "perché", "peut", "pour", "pourquoi", "puedo", "qué",
    "quel", "quelle", "qui", "sind", "sobre", "sont", "sur", "très", "uma", "und", "une", "uno",
    "van", "voor", "vous", "warum", "welche", "wenn", "werden", "wie", "wird", "zum", "zur", "não",
    "é", "een", "ik", "mijn", "hoe", "wat", "niet", "kan", "est-ce", "un", "le", "du", "au", "aux",
    "ce", "mon", "mes", "el", "mi", "mis", "su", "sus", "em", "meu", "minha", "ao", "il", "di",
    "gli", "sono", "que", "al", "lo", "tengo",
];

/// English function words (a few are enough to outvote a borrowed foreign word).
const ENGLISH: &[&str] = &[
    "a", "an", "and", "are", "can", "do", "does", "for", "how", "i", "in", "is", "it", "my", "of",
    "on", "the", "to", "what", "when", "where", "which", "why", "with", "you",
];

/// True when `text` looks like it is not English: a third of its letters outside ASCII, or
/// more function words of another language than of English (at least two).
pub fn looks_non_english(text: &str) -> bool {
    let (mut letters, mut non_ascii) = (0usize, 0usize);
    for c in text.chars().filter(|c| c.is_alphabetic()) {
        letters += 1;
        non_ascii += !c.is_ascii() as usize;
    }
    if letters == 0 {
        return false;
    }
    if non_ascii * 3 >= letters {
        return true;
    }
    let (mut foreign, mut english) = (0usize, 0usize);
    for w in text.split(|c: char| !(c.is_alphanumeric() || c == '\'')) {
        if w.is_empty() || w.len() > 8 {
            continue;
        }
        // Per character: `str::to_lowercase` would add its own code to the widget's wasm.
        let w: String = w.chars().flat_map(char::to_lowercase).collect();
        // "qu'est-ce", "l'option": the part before the apostrophe is the function word.
        let w = w.split('\'').next().unwrap_or("");
        if FOREIGN.contains(&w) {
            foreign += 1;
        } else if ENGLISH.contains(&w) {
            english += 1;
        }
    }
    foreign >= 2 && foreign > english
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_questions_are_english() {
        for q in [
            "How do I declare a constant?",
            "What does --force-with-lease do?",
            "and how do I turn it off?",
            "CARGO_HOME",
            "Is the con of this approach per crate or per workspace?",
            "Can I use a café-style naïve résumé parser?",
            "",
        ] {
            assert!(!looks_non_english(q), "{q}");
        }
    }

    #[test]
    fn questions_in_other_languages_are_recognised() {
        for q in [
            "Wie deklariere ich eine Konstante?",
            "Comment créer un nouveau vecteur ?",
            "Qu'est-ce que le shadowing d'une variable ?",
            "¿Cómo leo la entrada del usuario desde la terminal?",
            "Como faço para gerar a documentação para outra plataforma?",
            "Rust 的所有权规则是什么？",
            "ライフタイム注釈の構文を教えてください",
            "Как объявить константу?",
            "Hoe maak ik een nieuwe branch voor mijn werk?",
        ] {
            assert!(looks_non_english(q), "{q}");
        }
    }
}
