"""ARCHITECTURE.md's worked example of adding a Python function, called as a user would."""
# recipe-example: python-function (its test)
from paraes import _paraes


def test_the_recipe_example_counts_aes_blocks():
    assert [_paraes._recipe_example(n) for n in (0, 1, 16, 17, 4096)] == [0, 1, 1, 2, 256]
