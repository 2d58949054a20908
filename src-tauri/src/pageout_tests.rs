use super::*;

fn parse(text: &str) -> Vec<(usize, usize)> {
    let mut line = MapsLine::default();
    text.bytes().filter_map(|b| line.push(b)).collect()
}

#[test]
fn only_read_only_mappings_of_files_are_chosen() {
    let maps = "\
5581a0e00000-5581a0e2a000 r--p 00000000 fd:01 1234  /usr/bin/mandate-window
5581a0e2a000-5581a1000000 r-xp 0002a000 fd:01 1234  /usr/bin/mandate-window
5581a1000000-5581a1010000 rw-p 00200000 fd:01 1234  /usr/bin/mandate-window
5581a2000000-5581a2100000 rw-p 00000000 00:00 0     [heap]
7f0000000000-7f0000001000 r--p 00000000 00:00 0
7f0000001000-7f0000002000 r--p 00000000 00:00 0     [vvar]
7f0000002000-7f0000003000 r-xs 00000000 00:05 77    /memfd:wayland (deleted)
7f0000003000-7f0000004000 r--p 00000000 fd:01 99    /home/a b/lib with spaces.so
7f0000004000-7f0000005000 r--p 00000000 fd:01 98    /tmp/gone.so (deleted)
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]
";
    assert_eq!(
        parse(maps),
        vec![
            (0x5581a0e00000, 0x5581a0e2a000),
            (0x5581a0e2a000, 0x5581a1000000),
            (0x7f0000003000, 0x7f0000004000),
            (0x7f0000004000, 0x7f0000005000),
        ]
    );
}

#[test]
fn a_malformed_line_is_skipped_and_the_next_one_read() {
    let maps = "\
7f00zz000000-7f0000001000 r--p 00000000 fd:01 1 /lib/a.so
11111111111111111111-7f0000001000 r--p 00000000 fd:01 1 /lib/b.so
7f0000002000-7f0000001000 r--p 00000000 fd:01 1 /lib/backwards.so
7f0000001000 r--p 00000000 fd:01 1 /lib/no-end.so
7f0000001000-7f0000002000-7f0000003000 r--p 00000000 fd:01 1 /lib/two-dashes.so
7f0000001000-7f0000002000 r--p
7f0000004000-7f0000005000 r--p 00000000 fd:01 1 /lib/good.so
7f0000006000-7f0000007000 r--p 00000000 fd:01 1 /lib/no-newline.so";
    assert_eq!(parse(maps), vec![(0x7f0000004000, 0x7f0000005000)]);
}

#[test]
fn this_process_gives_back_its_pages_and_runs_on() {
    let advised = give_back_clean_file_pages();
    assert!(advised > 0, "a test binary maps itself read-only");
    // Code that was paged out runs again (read back from the page cache).
    assert_eq!(parse("1-2 r--p 0 0:0 1 /x\n"), vec![(1, 2)]);
}
