select 'a;b', "c;d" -- x;
; /* ; */ select $t$ ; $t$; E'\';