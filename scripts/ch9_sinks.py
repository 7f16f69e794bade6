"""Chapter 9 part 2: attention sinks, taken away in MiniLM and grown in a causal toy.

Regenerates scripts/results/ch9_sinks.json. The study itself is
mha_lib.experiments.studies.ch9_sinks: its docstring says what it runs and how long it takes;
--help lists the options.
"""

from mha_lib.experiments.studies.ch9_sinks import main

if __name__ == "__main__":
    main()
