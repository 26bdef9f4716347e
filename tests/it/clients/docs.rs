//! The client docs show the code the tests run: every fenced block of README.md and
//! docs/ preceded by `<!-- file: PATH -->` is exactly the file at PATH (an example
//! that tools::examples or this suite runs), so a page cannot drift from it.

use std::path::Path;

use super::repo;

/// (page, path, block) for every `<!-- file: PATH -->` block of `text`.
fn file_blocks(page: &str, text: &str) -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("<!-- file: ") {
        let after = &rest[at + "<!-- file: ".len()..];
        let end = after.find(" -->").expect("a file marker ends with -->");
        let path = after[..end].trim().to_owned();
        let body = &after[end..];
        let open = body.find("```").expect("a fenced block follows the marker");
        let code = &body[open..];
        let start = code.find('\n').expect("fence line") + 1;
        let close = code[start..].find("\n```").expect("the block is closed") + start;
        found.push((page.to_owned(), path, code[start..=close].to_owned()));
        rest = &code[close..];
    }
    found
}

fn pages() -> Vec<String> {
    let mut pages = vec!["README.md".to_owned()];
    let mut stack = vec![repo("docs")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read docs/").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                let rel = path.strip_prefix(repo("")).expect("under the repo");
                pages.push(rel.display().to_string());
            }
        }
    }
    pages
}

#[test]
fn every_file_block_in_the_docs_is_the_file_it_names() {
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(repo(&page)).expect("read page");
        for (page, path, block) in file_blocks(&page, &text) {
            let file = std::fs::read_to_string(repo(&path))
                .unwrap_or_else(|e| panic!("{page} shows {path}, which cannot be read: {e}"));
            assert_eq!(
                block, file,
                "{page}: the block marked {path} is not that file"
            );
            assert!(Path::new(&path).is_relative(), "{page}: {path}");
            checked += 1;
        }
    }
    // The README shows a hello-world worker per client, and each client's page more.
    assert!(checked >= 6, "only {checked} file blocks found");
}
