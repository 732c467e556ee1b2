fn main() {
    // Reads tauri.conf.json and capabilities/, checks the icons, and
    // generates the ACL schemas under gen/ (ignored by git).
    tauri_build::build();
}
