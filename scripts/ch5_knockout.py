"""Chapter 5 part 3: the parsing heads switched off, against other heads.

Regenerates scripts/results/ch5_knockout.json. The study itself is
mha_lib.experiments.studies.ch5_knockout: its docstring says what it runs and how long it takes;
--help lists the options.
"""

from mha_lib.experiments.studies.ch5_knockout import main

if __name__ == "__main__":
    main()
