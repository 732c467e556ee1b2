/** `git diff --cached -M HEAD` of a real repository: a rename to a quoted
 * path, a new binary file, a modified, a deleted, a mode-only and a new
 * file without a final newline. */
export const GIT_PATCH = `diff --git a/keep.md "b/docs/\\303\\251 x.md"
similarity index 100%
rename from keep.md
rename to "docs/\\303\\251 x.md"
diff --git a/logo.png b/logo.png
new file mode 100644
index 0000000..e21458c
Binary files /dev/null and b/logo.png differ
diff --git a/main.rs b/main.rs
index 1b7c1e7..7527576 100644
--- a/main.rs
+++ b/main.rs
@@ -1,3 +1,3 @@
 fn main() {
-    println!("hi");
+    println!("hello");
 }
diff --git a/old.txt b/old.txt
deleted file mode 100644
index 286c5f5..0000000
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-gone
diff --git a/run.sh b/run.sh
old mode 100644
new mode 100755
diff --git a/tail.txt b/tail.txt
new file mode 100644
index 0000000..20cbb4d
--- /dev/null
+++ b/tail.txt
@@ -0,0 +1 @@
+no newline
\\ No newline at end of file
`;
