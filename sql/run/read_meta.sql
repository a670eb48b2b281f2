SELECT body FROM st.state_meta;
