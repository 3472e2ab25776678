#!/usr/bin/python3
"""A reference matcher for cctdb's path queries (docs/query.md), written
independently of src/query/path_query.cc to check its NFA: it parses the
queries with a small tokenizer and recursive descent, and matches each query
against every root-to-node path by plain backtracking over the steps, with
each step's quantifier taken as a (min, max) count.

Usage: path_query_ref.py TREE.tsv QUERIES.txt
TREE.tsv: id, parent, kind, name, module, file, line, cputime (ns) per node
(the root, id 0, is implicit). Prints, per query, the ids of the nodes where
a matching path ends, ascending, space-separated (an empty line for none).
Covers the grammar path_query_test.cc generates: every step form and
quantifier, name/module/file/kind/line and inc/exc(cputime) comparisons with
ms and %, and, or, not, parentheses.
"""
import functools
import re
import sys

INF = float("inf")


class Node:
    def __init__(self, fields):
        self.id = int(fields[0])
        self.parent = int(fields[1])
        self.kind = fields[2]
        self.name = fields[3]
        self.module = fields[4]
        self.file = fields[5]
        self.line = int(fields[6])
        self.exc = float(fields[7])
        self.inc = 0.0


def load_tree(path):
    nodes = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            n = Node(line.rstrip("\n").split("\t"))
            nodes[n.id] = n
    # Inclusive = own value plus every descendant's: walk each node's
    # ancestors (slow and obviously right).
    for n in nodes.values():
        v = n
        while True:
            v.inc += n.exc
            if v.parent == 0:
                break
            v = nodes[v.parent]
    total = sum(n.exc for n in nodes.values())
    return nodes, total


TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<op>!=|!~|<=|>=|==|=|~|<|>|\(|\)|\[|\]|\{|\}|,|/|!)
  | (?P<number>\d+(?:\.\d+)?)
  | (?P<word>[A-Za-z_][A-Za-z0-9_:.\-$]*)
  | (?P<dot>\.)
  | (?P<star>\*)
  | (?P<plus>\+)
  | (?P<question>\?)
  | (?P<percent>%)
""", re.VERBOSE)


def tokenize(text):
    tokens, pos = [], 0
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise SyntaxError("bad character at %d" % pos)
        kind = m.lastgroup
        # Whitespace matters only between steps; keep it as a token.
        tokens.append((kind, m.group(kind)))
        pos = m.end()
    tokens.append(("end", ""))
    return tokens


class Parser:
    def __init__(self, text, total):
        self.toks = tokenize(text)
        self.i = 0
        self.total = total

    def peek(self):
        return self.toks[self.i]

    def take(self):
        t = self.toks[self.i]
        self.i += 1
        return t

    def skip_space(self):
        while self.peek()[0] == "space":
            self.i += 1

    def expect(self, value):
        self.skip_space()
        t = self.take()
        if t[1] != value:
            raise SyntaxError("expected %r, got %r" % (value, t))

    def steps(self):
        out = []
        while True:
            while self.peek()[0] == "space" or self.peek()[1] == "/":
                self.i += 1
            if self.peek()[0] == "end":
                return out
            out.append(self.step())

    def step(self):
        kind, value = self.take()
        if kind == "star":
            return (None, 0, INF)
        if kind == "plus":
            return (None, 1, INF)
        if kind == "dot":
            return self.quantified(None)
        if value == "[":
            pred = self.disjunction()
            self.expect("]")
            return self.quantified(pred)
        if kind == "word":
            return ((lambda n, w=value: n.name == w), 1, 1)
        if kind == "string":
            return ((lambda n, w=unquote(value): n.name == w), 1, 1)
        raise SyntaxError("bad step %r" % (value,))

    def quantified(self, pred):
        kind, value = self.peek()
        if kind == "star":
            self.i += 1
            return (pred, 0, INF)
        if kind == "plus":
            self.i += 1
            return (pred, 1, INF)
        if kind == "question":
            self.i += 1
            return (pred, 0, 1)
        if value == "{":
            self.i += 1
            lo = int(self.take()[1])
            hi = lo
            if self.peek()[1] == ",":
                self.i += 1
                hi = INF if self.peek()[1] == "}" else int(self.take()[1])
            self.expect("}")
            return (pred, lo, hi)
        return (pred, 1, 1)

    def disjunction(self):
        parts = [self.conjunction()]
        while self.keyword("or"):
            parts.append(self.conjunction())
        return lambda n: any(p(n) for p in parts)

    def conjunction(self):
        parts = [self.negation()]
        while self.keyword("and"):
            parts.append(self.negation())
        return lambda n: all(p(n) for p in parts)

    def keyword(self, word):
        self.skip_space()
        if self.peek() == ("word", word):
            self.i += 1
            return True
        return False

    def negation(self):
        if self.keyword("not"):
            inner = self.negation()
            return lambda n: not inner(n)
        self.skip_space()
        if self.peek()[1] == "(":
            self.i += 1
            inner = self.disjunction()
            self.expect(")")
            return inner
        return self.comparison()

    def comparison(self):
        self.skip_space()
        field = self.take()[1]
        metric = None
        if field in ("inc", "exc"):
            self.expect("(")
            self.skip_space()
            metric = self.take()[1]
            assert metric == "cputime", metric
            self.expect(")")
        self.skip_space()
        op = self.take()[1]
        self.skip_space()
        kind, value = self.take()
        if field in ("name", "module", "file"):
            text = unquote(value) if kind == "string" else value
            get = lambda n, f=field: getattr(n, f)
            if op in ("=", "=="):
                return lambda n: get(n) == text
            if op == "!=":
                return lambda n: get(n) != text
            rx = re.compile(text)
            if op == "~":
                return lambda n: rx.search(get(n)) is not None
            return lambda n: rx.search(get(n)) is None
        if field == "kind":
            want = "gpu-op" if value == "gpu" else value
            return (lambda n: n.kind == want) if op in ("=", "==") else (lambda n: n.kind != want)
        number = float(value)
        if field == "line":
            return lambda n: compare(op, n.line, number)
        # Metric thresholds in ns: the unit after the number, else seconds.
        unit = self.peek()
        if unit[0] == "percent":
            self.i += 1
            threshold = number * 0.01 * self.total
        elif unit == ("word", "ms"):
            self.i += 1
            threshold = number * 1e6
        else:
            threshold = number * 1e9
        return lambda n, f=field: compare(op, n.inc if f == "inc" else n.exc, threshold)


def unquote(s):
    return re.sub(r'\\(["\\])', r"\1", s[1:-1])


def compare(op, a, b):
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "=": a == b, "==": a == b, "!=": a != b}[op]


def matches(steps, path):
    """Whether the steps match the whole path, by backtracking."""
    @functools.lru_cache(maxsize=None)
    def go(i, j):
        if i == len(steps):
            return j == len(path)
        pred, lo, hi = steps[i]
        k = 0
        while True:
            if k >= lo and go(i + 1, j + k):
                return True
            if k >= hi or j + k >= len(path):
                return False
            if pred is not None and not pred(path[j + k]):
                return False
            k += 1
    return go(0, 0)


def main():
    nodes, total = load_tree(sys.argv[1])
    paths = {}
    for n in sorted(nodes.values(), key=lambda x: x.id):
        paths[n.id] = (paths[n.parent] if n.parent else ()) + (n,)
    with open(sys.argv[2], encoding="utf-8") as f:
        for line in f:
            steps = tuple(Parser(line.rstrip("\n"), total).steps())
            ends = [i for i, p in sorted(paths.items()) if matches(steps, p)]
            print(" ".join(str(i) for i in ends))


if __name__ == "__main__":
    main()
