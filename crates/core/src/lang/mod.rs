//! Is a question written in English? A cheap guess, good enough for two decisions: whether
//! the widget asks a chat model to rewrite (translate) it, and whether search can judge it by
//! how many of its words the (English) docs contain — it cannot when the words are German.
//!
//! Three signals: letters outside ASCII (CJK, Cyrillic, Greek... and heavily accented text),
//! function words of the most common Latin-script languages that are not English words, and,
//! for the short keyword questions that have none ("modo oscuro", "wie installieren"), how
//! English the words' letter triples look ([`trigram_score`], a table learnt from translated
//! program messages: `eval/lang-id/train.py`).

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
    "gli", "sono", "que", "al", "lo", "tengo", "de", "um", "en", "la",
];

/// English function words (a few are enough to outvote a borrowed foreign word).
const ENGLISH: &[&str] = &[
    "a", "an", "and", "are", "can", "do", "does", "for", "how", "i", "in", "is", "it", "my", "of",
    "on", "the", "to", "what", "when", "where", "which", "why", "with", "you",
];

/// True when `text` looks like it is not English: a third of its letters outside ASCII, an
/// opening `¿` or `¡` (Spanish), more function words of another language than of English (at
/// least two), or letter triples that look foreign on average ([`trigram_score`]).
pub fn looks_non_english(text: &str) -> bool {
    if text.contains(['¿', '¡']) {
        return true;
    }
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
        let w = crate::case::lower_str(w);
        // "qu'est-ce", "l'option": the part before the apostrophe is the function word.
        let w = w.split('\'').next().unwrap_or("");
        if FOREIGN.contains(&w) {
            foreign += 1;
        } else if ENGLISH.contains(&w) {
            english += 1;
        }
    }
    (foreign >= 2 && foreign > english) || trigram_score(text).is_some_and(|s| s < FOREIGN_SCORE)
}

/// `trigrams.txt`: one line per weight, `weight trigram trigram…`; the weight is 16 ×
/// ln(P(g | English) / P(g | German, French, Spanish, Portuguese, Italian or Dutch)), clamped to
/// an i8, in steps of 8. Written by `eval/lang-id/train.py`.
const TRIGRAMS: &str = include_str!("trigrams.txt");

/// The mean trigram weight below which a text is not English: −0.75 in log-ratio units (×16).
/// Picked on eval/lang-id/questions.jsonl (written for this, by someone who had not seen the
/// table): 103 of its 140 questions in six languages recognised (84 by function words alone),
/// none of its 80 English ones, none of 1,189 English eval questions (BENCHMARKS.md §2.0.35).
const FOREIGN_SCORE: f32 = -12.0;

/// The table's lines as (weight, trigrams sorted by bytes), as written. Read for each question
/// (1,482 slices, microseconds): a cache would cost the widget more bytes than it saves time.
fn trigram_table() -> Vec<(i32, Vec<&'static str>)> {
    TRIGRAMS
        .lines()
        .filter_map(|l| {
            let mut parts = l.split(' ');
            let weight: i32 = parts.next()?.parse().ok()?;
            Some((weight, parts.collect()))
        })
        .collect()
}

/// Letter triples enough to judge a text: a question has tens, a section of docs may have
/// millions (a page of one 1 MB "word" spent 2 s here while `docent index` measured the docs'
/// language), and its first few thousand say what the rest would.
const MAX_TRIGRAMS: u32 = 4096;

/// Mean weight of the letter triples of `text`'s words (each as `^word$`; at most the first
/// [`MAX_TRIGRAMS`]), or None when it has no word to judge. Tokens that look like code
/// (`target_os`, `@jest/globals`, `baseUrl`, `v2`) are left out: identifiers are English-ish
/// whatever language the question is in.
fn trigram_score(text: &str) -> Option<f32> {
    let mut table = None;
    let (mut sum, mut n) = (0i32, 0u32);
    let mut padded = String::new();
    let mut ends = Vec::new();
    for token in text.split_whitespace() {
        if n >= MAX_TRIGRAMS {
            break;
        }
        let core = token.trim_matches(|c: char| "?!.,;:()\"'¿¡«»".contains(c));
        let b = core.as_bytes();
        if b.iter().any(|c| b"_/@.:=<>()[]{}#$`0123456789".contains(c))
            || b.windows(2).any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase())
        {
            continue;
        }
        for word in core.split(|c: char| !c.is_alphabetic()) {
            padded.clear();
            padded.push('^');
            padded.push_str(&crate::case::lower_str(word));
            padded.push('$');
            ends.clear();
            ends.extend(padded.char_indices().map(|(i, _)| i));
            ends.push(padded.len());
            // A word of one letter says nothing.
            if ends.len() < 5 {
                continue;
            }
            let table: &Vec<(i32, Vec<&str>)> = table.get_or_insert_with(trigram_table);
            for k in 0..(ends.len() - 3).min((MAX_TRIGRAMS - n) as usize) {
                let gram = &padded[ends[k]..ends[k + 3]];
                n += 1;
                sum += table
                    .iter()
                    .find(|(_, grams)| grams.binary_search(&gram).is_ok())
                    .map_or(0, |(w, _)| *w);
            }
        }
    }
    (n > 0).then(|| sum as f32 / n as f32)
}

/// Function words of the Latin-script languages [`language_name`] can name. A word may serve
/// several ("que"): the language with the most wins.
const LATIN_LANGUAGES: [(&str, &[&str]); 6] = [
    (
        "German",
        &[
            "und", "der", "die", "das", "nicht", "ist", "mit", "ein", "eine", "auf", "für", "den",
            "dem", "sich", "auch", "wird", "werden", "kann", "oder", "wenn",
        ],
    ),
    (
        "French",
        &[
            "le", "les", "des", "est", "une", "pour", "dans", "pas", "que", "qui", "sur", "avec",
            "sont", "vous", "nous", "cette", "ce", "aux", "du", "peut",
        ],
    ),
    (
        "Spanish",
        &[
            "el", "los", "las", "que", "para", "con", "una", "por", "del", "es", "se", "como",
            "más", "está", "pero", "sus", "puede", "este", "esta", "también",
        ],
    ),
    (
        "Portuguese",
        &[
            "não", "uma", "para", "com", "os", "do", "da", "que", "se", "em", "mais", "como",
            "são", "pode", "também", "você", "ao", "das", "dos", "está",
        ],
    ),
    (
        "Italian",
        &[
            "il", "che", "di", "per", "non", "una", "gli", "sono", "della", "con", "come", "anche",
            "può", "questo", "questa", "nel", "alla", "dei", "delle", "essere",
        ],
    ),
    (
        "Dutch",
        &[
            "het", "een", "van", "niet", "voor", "ook", "de", "en", "zijn", "met", "dat", "op",
            "je", "te", "kan", "wordt", "worden", "deze", "bij", "naar",
        ],
    ),
];

/// The language a text (a page's prose, not a short question) is written in, by its English
/// name, for prompts ("rewrite the question in Chinese"): "English" when it does not
/// [`looks_non_english`]; Japanese, Korean or Chinese by script (kana among the Han characters
/// make it Japanese); German, French, Spanish, Portuguese, Italian or Dutch by their function
/// words. `None` for a language it cannot name (Cyrillic, Arabic... scripts are shared by several).
pub fn language_name(text: &str) -> Option<&'static str> {
    if !looks_non_english(text) {
        return Some("English");
    }
    let (mut han, mut kana, mut hangul, mut other) = (0usize, 0usize, 0usize, 0usize);
    for c in text.chars().filter(|c| c.is_alphabetic() && !c.is_ascii()) {
        match c as u32 {
            0x3040..=0x30FF => kana += 1,
            0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF => han += 1,
            0x1100..=0x11FF | 0xAC00..=0xD7AF => hangul += 1,
            0x00C0..=0x024F => {} // accented Latin letters
            _ => other += 1,
        }
    }
    let cjk = han + kana + hangul;
    if cjk > other && cjk > 0 {
        return Some(if hangul * 2 > cjk {
            "Korean"
        } else if kana * 10 >= cjk {
            "Japanese"
        } else {
            "Chinese"
        });
    }
    if other > 0 {
        return None;
    }
    let mut votes = [0usize; LATIN_LANGUAGES.len()];
    for w in text.split(|c: char| !c.is_alphanumeric()) {
        if w.is_empty() || w.len() > 8 {
            continue;
        }
        let w = crate::case::lower_str(w);
        for (i, (_, words)) in LATIN_LANGUAGES.iter().enumerate() {
            votes[i] += words.contains(&w.as_str()) as usize;
        }
    }
    let best = (0..votes.len()).max_by_key(|&i| (votes[i], usize::MAX - i))?;
    (votes[best] > 0).then_some(LATIN_LANGUAGES[best].0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_is_judged_by_its_first_letter_triples() {
        // Enough English for MAX_TRIGRAMS, then a megabyte of one word: the score is the
        // English part's, and the rest is not read (it took 2 s a megabyte).
        let english =
            "configure the search widget before publishing your documentation ".repeat(80);
        let long = format!("{english}{}", "zzqxj".repeat(200_000));
        assert_eq!(trigram_score(&long), trigram_score(&english));
        assert!(!looks_non_english(&long));
        // A question is read whole.
        let q = "wie kann ich die Suche konfigurieren";
        assert!(trigram_score(q).is_some_and(|s| s < FOREIGN_SCORE), "{:?}", trigram_score(q));
    }

    #[test]
    fn a_page_s_language_is_named() {
        let cases = [
            ("Set CARGO_HOME to move the cache of downloaded crates, and run the build again.", Some("English")),
            ("构建结果会保存在缓存目录中，再次构建时只处理修改过的文件，因此速度更快。", Some("Chinese")),
            ("ビルドの結果はキャッシュに保存され、次のビルドでは変更されたファイルだけを処理します。", Some("Japanese")),
            ("빌드 결과는 캐시 디렉터리에 저장되며 다시 빌드할 때 변경된 파일만 처리합니다.", Some("Korean")),
            ("Die Ergebnisse werden im Cache gespeichert, und beim nächsten Build wird nur das neu gebaut, was sich geändert hat.", Some("German")),
            ("Les résultats sont conservés dans le cache, et la prochaine compilation ne traite que les fichiers qui ont changé.", Some("French")),
            ("Los resultados se guardan en la caché y la siguiente compilación solo procesa los archivos que han cambiado.", Some("Spanish")),
            ("Результаты сборки сохраняются в кэше, и следующая сборка обрабатывает только изменённые файлы.", None),
        ];
        for (text, want) in cases {
            assert_eq!(language_name(text), want, "{text}");
        }
    }

    #[test]
    fn english_questions_are_english() {
        for q in [
            "How do I declare a constant?",
            "What does --force-with-lease do?",
            "and how do I turn it off?",
            "CARGO_HOME",
            "Is the con of this approach per crate or per workspace?",
            "docker compose example",
            "target_os",
            "@jest/globals",
            "edtLink baseUrl",
            "pricing?",
            "Can I use a café-style naïve résumé parser?",
            "How do I add the de and en locales to a la carte builds?",
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
            // keyword questions with no function word: the letter triples tell (session 37)
            "docent unterstützt auch andere Sprachen als Englisch?",
            "Funktioniert es auch ohne API-Schlüssel?",
            // one listed function word each before "de", "um" and "¿" counted (session 23)
            "¿Funciona docent con documentación en español?",
            "Preciso de um servidor para usar o docent?",
            "¡Necesito ayuda con el proxy!",
        ] {
            assert!(looks_non_english(q), "{q}");
        }
    }
}
