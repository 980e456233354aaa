"""The leaderboards: configured retrievers and systems and every submission, side by side, per track."""

from mama_pipeline.common.face import lazy_face

DEFINED_IN = {  # public name -> the module that defines it (common/face.py)
    "BENCHMARK_TRACKS": "mama_pipeline.leaderboard._leaderboard_inputs",
    "JSON_FILE": "mama_pipeline.leaderboard._leaderboard_files",
    "PAGE_FILE": "mama_pipeline.leaderboard._leaderboard_files",
    "Stats": "mama_pipeline.leaderboard._board",
    "answer_specs": "mama_pipeline.leaderboard._build",
    "facts": "mama_pipeline.leaderboard._build",
    "folder_files": "mama_pipeline.leaderboard._leaderboard_files",
    "measures_of": "mama_pipeline.leaderboard._build",
    "retrieval_specs": "mama_pipeline.leaderboard._build",
    "smoke_banners": "mama_pipeline.leaderboard._leaderboard_files",
}
__all__ = [
    "BENCHMARK_TRACKS",
    "JSON_FILE",
    "PAGE_FILE",
    "Stats",
    "answer_specs",
    "facts",
    "folder_files",
    "measures_of",
    "retrieval_specs",
    "smoke_banners",
]
__getattr__, __dir__ = lazy_face(__name__, DEFINED_IN)
