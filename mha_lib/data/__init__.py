"""Text the book reads, written for it or generated with known answers: example sentences
shared by chapters, the live lab's export, tests and benchmarks (`sentences`); sentences with
known dependencies (`syntax`), coreference (`coreference`) and similarity (`similarity`) items,
the word-sense items (`senses`) and nouns in syntactic roles (`roles`)."""
