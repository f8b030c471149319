use dsh_prompt_template::Template;
#[test]
fn smoke() {
    for (src, ok) in [
        ("a <<model>> b", true),
        ("<< model >>", false),
        ("<<<model>>>", false),
        ("cat <<EOF", true),
        ("a << b << c >> d", false),
        ("\\<<x>>", true),
        ("<<>>", false),
    ] {
        let r = Template::parse(src);
        println!("{src:?} => {r:?}");
        if let Err(e) = &r {
            println!("{e}");
        }
        assert_eq!(r.is_ok(), ok, "{src}");
    }
    let t = Template::parse("\\<<x>> <<y>>").unwrap();
    assert_eq!(
        t.render("\\<<x>> <<y>>", |_| Ok::<_, ()>("<<z>>")).unwrap(),
        "<<x>> <<z>>"
    );
}
