"""Text utilities: token counting, CJK-aware segmentation for BM25, date parsing."""
