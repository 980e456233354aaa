"""The leaderboards: configured retrievers and systems and every submission, side by side, per track."""
