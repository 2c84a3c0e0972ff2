"""trueup: make reality match a declaration, safely."""

__version__ = "0.1.0"
