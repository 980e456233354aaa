"""The answerability gate and query writer: one LLM call per sampled chunk, stable query ids."""
