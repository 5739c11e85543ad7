/**
 * The verification tests' fixture repository: `add` subtracts (test_add fails), `sub` is right (test_sub passes),
 * tested with unittest (pytest runs it too).
 */
export const CALC = 'def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n';
export const TESTS =
  'import unittest\nfrom calc import add, sub\n\n\nclass TestCalc(unittest.TestCase):\n' +
  '    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n' +
  '    def test_sub(self):\n        self.assertEqual(sub(5, 3), 2)\n';
