"""The GitHub bridge (github.com and GitHub Enterprise Server): client.py implements `Forge`."""
