"""Markdown tables, as the result tools print them: the first column (the
row's name) left-aligned, every other column right-aligned (numbers)."""


def table(header, rows):
  """The lines of a Markdown table.

  Args:
    header: the column titles (strings).
    rows: lists of cell strings, each as long as `header`.

  Returns:
    A list of lines: the header, the alignment row, one line per row.
  """
  return ([_line(header), '|---|' + '---:|' * (len(header) - 1)] +
          [_line(row) for row in rows])


def _line(cells):
  return '|' + '|'.join(f' {cell} ' if cell else ' ' for cell in cells) + '|'
