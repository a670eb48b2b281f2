SELECT (SELECT count(*) FROM (FROM st.out_sandbox_sample EXCEPT ALL FROM sandbox_old))
     + (SELECT count(*) FROM (FROM sandbox_old EXCEPT ALL FROM st.out_sandbox_sample));
