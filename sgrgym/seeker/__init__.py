"""SeekerGym: corpora, a pinned offline embedder, a LanceDB passage store, episodes."""
