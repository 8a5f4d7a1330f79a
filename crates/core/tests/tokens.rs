//! Token counting: the ranks file round trip, exact counts, the byte upper bound, message overhead.

use docent_core::prompt::{Message, Role};
use docent_core::tokens::{
    cl100k_ranks_file, count_message_tokens, Bpe, ByteBound, TokenCounter, TokensError,
};
use proptest::prelude::*;
use std::sync::OnceLock;

fn tiktoken_asset() -> Vec<u8> {
    let home = std::env::var("CARGO_HOME").map(std::path::PathBuf::from).unwrap_or_else(|_| {
        std::path::PathBuf::from(std::env::var("HOME").expect("HOME")).join(".cargo")
    });
    let src = home.join("registry").join("src");
    for registry in std::fs::read_dir(&src).expect("cargo registry sources") {
        let p = registry.unwrap().path().join("tiktoken-rs-0.12.1/assets/cl100k_base.tiktoken");
        if p.exists() {
            return std::fs::read(p).unwrap();
        }
    }
    panic!("tiktoken-rs-0.12.1 sources not found under {}", src.display());
}

fn loaded() -> &'static Bpe {
    static BPE: OnceLock<Bpe> = OnceLock::new();
    BPE.get_or_init(|| {
        Bpe::from_tiktoken_file(cl100k_ranks_file().as_bytes()).expect("regenerated ranks load")
    })
}

const SAMPLES: &[&str] = &[
    "",
    "Hello, world!",
    "How do I set CARGO_HOME and use `cargo build --locked`?",
    "fn main() {\n    println!(\"{}\", 1 + 2);\n}\n",
    "Wie konfiguriere ich den Build-Ordner? Ünïcödé façade — naïve café.",
    "日本語のドキュメントを検索します。한국어 텍스트도 있습니다.",
    "emoji 🦀🚀👩‍💻 and <|endoftext|> special text",
    "   leading and trailing whitespace\r\n\r\n\t\t",
    "1234567890 3.14159 0xdeadbeef",
];

#[test]
fn regenerated_ranks_file_equals_the_tiktoken_asset_byte_for_byte() {
    let ours = cl100k_ranks_file();
    let asset = tiktoken_asset();
    assert_eq!(ours.len(), asset.len());
    assert!(
        ours.as_bytes() == asset.as_slice(),
        "regenerated ranks differ from tiktoken-rs's cl100k_base.tiktoken"
    );
}

#[test]
fn tokenizer_loaded_from_the_ranks_file_counts_like_tiktoken_cl100k() {
    let reference = tiktoken_rs::cl100k_base_singleton();
    let bpe = loaded();
    for s in SAMPLES {
        assert_eq!(bpe.count(s), reference.encode_ordinary(s).len(), "{s:?}");
        assert_eq!(bpe.encode(s), reference.encode_ordinary(s), "{s:?}");
    }
    assert_eq!(bpe.count("Hello, world!"), 4);
}

#[test]
fn embedded_cl100k_counts_like_the_loaded_file() {
    let embedded = Bpe::cl100k();
    for s in SAMPLES {
        assert_eq!(embedded.count(s), loaded().count(s), "{s:?}");
    }
    assert!(embedded.exact());
    assert!(!ByteBound.exact());
}

#[test]
fn malformed_ranks_files_give_clear_errors() {
    assert_eq!(Bpe::from_tiktoken_file(b"").unwrap_err(), TokensError::Empty);
    assert_eq!(Bpe::from_tiktoken_file(b"\n\n").unwrap_err(), TokensError::Empty);
    let e = Bpe::from_tiktoken_file(b"IQ== 0\nnot-base64!! 1\n").unwrap_err();
    assert!(matches!(e, TokensError::BadLine { line: 2, .. }), "{e:?}");
    assert!(e.to_string().contains("line 2"));
    let e = Bpe::from_tiktoken_file(b"IQ== zero\n").unwrap_err();
    assert!(e.to_string().contains("not a number"), "{e}");
    let e = Bpe::from_tiktoken_file(b"IQ== 0\nIg== 0\n").unwrap_err();
    assert_eq!(e, TokensError::DuplicateRank(0));
    let e = Bpe::from_tiktoken_file(b"IQ== 0 extra\n").unwrap_err();
    assert!(matches!(e, TokensError::BadLine { line: 1, .. }));
    // A valid but incomplete file (no token for most bytes) would panic inside BPE: refuse it.
    let e = Bpe::from_tiktoken_file(b"IQ== 0\n").unwrap_err();
    assert!(matches!(e, TokensError::MissingByte(_)), "{e:?}");
    let e = Bpe::from_tiktoken_file(&[0xff, 0xfe, b'\n']).unwrap_err();
    assert!(e.to_string().contains("UTF-8"), "{e}");
}

#[test]
fn message_overhead_follows_the_openai_cookbook() {
    let bpe = loaded();
    let messages = vec![
        Message { role: Role::System, content: "You are a helpful assistant.".into() },
        Message { role: Role::User, content: "Hello, world!".into() },
    ];
    // 3 per message + role (1 token each) + content, + 3 priming.
    let expected = (3 + 1 + bpe.count("You are a helpful assistant.")) + (3 + 1 + 4) + 3;
    assert_eq!(count_message_tokens(bpe, &messages), expected);
    assert_eq!(count_message_tokens(bpe, &[]), 3);
    // The byte bound bounds the exact count for whole requests too.
    assert!(count_message_tokens(&ByteBound, &messages) >= expected);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn byte_length_is_never_below_the_true_token_count(s in any::<String>()) {
        let exact = loaded().count(&s);
        prop_assert!(ByteBound.count(&s) >= exact, "{} bytes < {} tokens for {:?}", s.len(), exact, s);
    }

    #[test]
    fn byte_bound_holds_for_code_and_prose_like_text(s in "[a-zA-Z0-9 _.,;:(){}<>\\[\\]\n\t'\"!?#-]{0,400}") {
        prop_assert!(ByteBound.count(&s) >= loaded().count(&s));
    }
}

// --- the fast cl100k counter (hand-written pre-tokeniser + memoised pieces) ---

fn rust_docs_pages() -> Vec<String> {
    let sysroot = std::process::Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .expect("rustc --print sysroot");
    let root = std::path::PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim())
        .join("share/doc/rust/html");
    let mut pages = Vec::new();
    for book in ["book", "reference"] {
        let mut files: Vec<_> = std::fs::read_dir(root.join(book))
            .expect("rust-docs installed")
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        for f in files.into_iter().filter(|p| p.extension().is_some_and(|e| e == "html")) {
            pages.push(std::fs::read_to_string(f).unwrap_or_default());
        }
    }
    pages
}

#[test]
fn the_fast_counter_agrees_with_tiktoken_on_every_section_of_the_rust_book_and_reference() {
    use docent_core::source::{parse_page, Flavor, Parsed, SourceKind};
    let reference = tiktoken_rs::cl100k_base_singleton();
    let mut checked = 0;
    for html in rust_docs_pages() {
        // The raw page (markup, scripts, entities) and every section's extracted text.
        let mut texts = vec![html.clone()];
        if let Ok(Parsed::Page(page)) =
            parse_page(SourceKind::Html, &html, Flavor::default(), "page")
        {
            texts.extend(
                page.sections
                    .iter()
                    .map(|s| s.blocks.iter().map(|b| b.render()).collect::<Vec<_>>().join("\n\n")),
            );
        }
        for t in &texts {
            assert_eq!(
                docent_core::tokens::cl100k_pieces(t).concat(),
                *t,
                "pieces must tile the text"
            );
            assert_eq!(
                docent_core::tokens::cl100k_count(t),
                reference.encode_ordinary(t).len(),
                "{}",
                &t[..t.len().min(200)]
            );
            checked += 1;
        }
    }
    assert!(checked > 1000, "only {checked} texts checked");
}

#[test]
fn the_fast_counter_agrees_with_tiktoken_on_the_samples_and_edge_cases() {
    let reference = tiktoken_rs::cl100k_base_singleton();
    let edge = [
        "it's I'M we'LL they've you're he'd 'sun 'Ll ſ'ſ can'ſ",
        "a  b   c\n\n  d \t\n e\r\n\r\n  ",
        "x\u{85}y\u{a0}z\u{2028}w \u{b}\u{c} end ",
        "12345678 1,234.56 ٣٤٥٦ Ⅻ ½",
        "e\u{301}te\u{301} cafe\u{301}s नमस्ते मराठी",
        "(foo) [bar]{baz} -> => ::<T>  !!!\n\n\n???",
        "\n",
        " ",
        "  ",
        "'",
        "''s",
        "a'",
        " '\n",
    ];
    for s in SAMPLES.iter().chain(edge.iter()) {
        assert_eq!(
            docent_core::tokens::cl100k_count(s),
            reference.encode_ordinary(s).len(),
            "{s:?}"
        );
    }
}

#[test]
fn a_run_longer_than_any_word_is_counted_in_parts_close_to_tiktoken() {
    // One "word" of 12 KB (a base64 blob, a hostile page): tiktoken's BPE over one such piece
    // costs more than its length, and the chunker counts many prefixes of it. Counted in 128-byte
    // parts, it is off by at most about a token per part.
    let reference = tiktoken_rs::cl100k_base_singleton();
    let mut seed = 11u32;
    let word: String = (0..12_000)
        .map(|_| {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (b'a' + ((seed >> 16) % 26) as u8) as char
        })
        .collect();
    for text in [word.clone(), format!("see {word} and more"), "=".repeat(5000)] {
        let exact = reference.encode_ordinary(&text).len();
        let counted = docent_core::tokens::cl100k_count(&text);
        let parts = text.len().div_ceil(128);
        assert!(counted.abs_diff(exact) <= parts, "{counted} against {exact}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn the_fast_counter_agrees_with_tiktoken_on_random_text(s in "[ a-zA-Z0-9'\\r\\n\\t\\u{b}\\u{85}\\u{a0}ſéé\\u{3000}\\u{2028}٣Ⅻ\\u{301}日本🦀(),.:;!?_\\-]{0,60}") {
        let reference = tiktoken_rs::cl100k_base_singleton();
        prop_assert_eq!(docent_core::tokens::cl100k_count(&s), reference.encode_ordinary(&s).len());
    }
}
