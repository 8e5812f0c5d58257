from gitbot.forge.gitlab.hunks import hunk_upto

DIFF = """@@ -1,3 +1,5 @@ def mean(xs):
 def mean(xs):
-    return sum(xs) / len(xs)
+    if not xs:
+        return 0
+    return sum(xs) / len(xs)
 
@@ -10,1 +11,1 @@
-x = 1
+x = 2
"""


def test_the_hunk_is_cut_at_the_commented_new_line():
    assert hunk_upto("stats.py", DIFF, new_line=3, old_line=None) == (
        "@@ -1,3 +1,5 @@ def mean(xs):\n def mean(xs):\n-    return sum(xs) / len(xs)\n+    if not xs:\n+        return 0"
    )
    assert hunk_upto("stats.py", DIFF, new_line=11, old_line=None) == "@@ -10,1 +11,1 @@\n-x = 1\n+x = 2"


def test_a_removed_line_is_found_by_its_old_number():
    assert hunk_upto("stats.py", DIFF, new_line=None, old_line=2).endswith("\n-    return sum(xs) / len(xs)")


def test_a_line_outside_the_diff_or_a_broken_diff_gives_no_hunk():
    assert hunk_upto("stats.py", DIFF, new_line=40, old_line=None) == ""
    assert hunk_upto("stats.py", "not a diff", new_line=1, old_line=None) == ""
    assert hunk_upto("stats.py", "", new_line=1, old_line=None) == ""
