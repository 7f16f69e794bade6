"""Text the book reads, written for it: example sentences shared by chapters, the live lab's
export, tests and benchmarks (`sentences`)."""
