"""Bounded hypothesis fuzz of the ``.ldp`` accessors and of the command line (issue 13).

Every example must end in a frameldp error (short, naming the column or the parameter) or in a
correct output; the input is never modified and nothing is written or charged on failure. The
examples are derandomized, so CI runs the same ones every time.
"""
