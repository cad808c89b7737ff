"""Sitemaps: parsing them, and finding them in a crawl's robots.txt."""
