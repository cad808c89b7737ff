"""HTML pages and what they load: links, text, charsets, stylesheets."""
