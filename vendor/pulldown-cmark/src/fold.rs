//! docent: case-insensitive link and footnote labels. Native builds use `unicase::UniCase`
//! (Unicode case folding, as CommonMark specifies). On `wasm32` this stand-in lowercases with
//! `docent_case::lower` (exactly `char::to_lowercase`, from the small table docent-core uses
//! too) instead of linking unicase's fold tables (about 6 KB of the widget's wasm) or std's
//! lowercase table (11.5 KB). The two differ only on a few letters (`ẞ` folds to `ss` in
//! Unicode, lowercases to `ß`) in reference labels of model answers.

#[cfg(not(target_arch = "wasm32"))]
pub(crate) use unicase::UniCase;

#[cfg(target_arch = "wasm32")]
pub(crate) use lower::UniCase;

#[cfg(target_arch = "wasm32")]
mod lower {
    use core::hash::{Hash, Hasher};

    /// A label compared and hashed by its lowercased characters.
    #[derive(Clone, Debug)]
    pub(crate) struct UniCase<S>(S);

    impl<S: AsRef<str>> UniCase<S> {
        pub(crate) fn new(s: S) -> Self {
            UniCase(s)
        }
        fn folded(&self) -> impl Iterator<Item = char> + '_ {
            self.0.as_ref().chars().flat_map(docent_case::lower)
        }
    }

    impl<S: AsRef<str>> AsRef<str> for UniCase<S> {
        fn as_ref(&self) -> &str {
            self.0.as_ref()
        }
    }

    impl<S: AsRef<str>> PartialEq for UniCase<S> {
        fn eq(&self, other: &Self) -> bool {
            self.folded().eq(other.folded())
        }
    }

    impl<S: AsRef<str>> Eq for UniCase<S> {}

    impl<S: AsRef<str>> Hash for UniCase<S> {
        fn hash<H: Hasher>(&self, h: &mut H) {
            for c in self.folded() {
                h.write_u32(c as u32);
            }
        }
    }
}
