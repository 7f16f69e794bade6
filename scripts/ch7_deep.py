"""Chapter 7: where too-large initial weights make the gradients explode, and what that does.

Regenerates scripts/results/ch7_deep.json. The study itself is
mha_lib.experiments.studies.ch7_deep: its docstring says what it runs and how long it takes;
--help lists the options.
"""

from mha_lib.experiments.studies.ch7_deep import main

if __name__ == "__main__":
    main()
