"""``python -m crawlkit``: the same program as the ``crawlkit`` command.

This entry point is the only place the library package touches the CLI package.
"""

from crawlkit_cli.main import main

if __name__ == "__main__":
    main()
