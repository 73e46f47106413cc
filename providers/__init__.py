"""Models: text analysis, embeddings, rerankers and the chat-model factory."""
