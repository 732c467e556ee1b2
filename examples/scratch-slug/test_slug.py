"""Run with: python3 test_slug.py (exits non-zero on the first failure)."""

from slug import slugify

CASES = {
    "Hello World": "hello-world",
    "Hello, World!": "hello-world",
    "  Many   spaces  ": "many-spaces",
    "Already-slugged": "already-slugged",
}

for title, expected in CASES.items():
    got = slugify(title)
    assert got == expected, f"slugify({title!r}) == {got!r}, expected {expected!r}"
print(f"all {len(CASES)} cases pass")
