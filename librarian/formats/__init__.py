"""The library's file formats, validated where they enter: safe YAML, library.yaml,
tools.yaml, librarian.lock, SKILL.md frontmatter, recipe.yaml.

May import: ``librarian.core``, ``librarian.errors``, PyYAML."""
